"""Shared GPU plumbing: the kernel loader, timers, device helpers."""
