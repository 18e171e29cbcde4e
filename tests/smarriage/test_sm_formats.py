"""The stable-marriage family's formats for outside programs
(matchbench/families/smarriage/formats.py).

Writer: ``prefs_file`` reads back what ``prefs`` writes as the same instance (both layouts:
lists and master lists). Readers: the man-optimal matching of the reference Gale-Shapley,
written as ``wife`` and as ``pairs``, reads back and verifies; hostile outputs are
AnswerErrors naming the source.
"""

from __future__ import annotations

import numpy as np
import pytest

from matchbench.core.errors import AnswerError
from matchbench.core.params import configured
from matchbench.core.problem import get_problem
from matchbench.external.formats import family_formats
from matchbench.families.smarriage import formats as F
from matchbench.families.smarriage.datasets import (
    SMOKE,
    prefs_file,
    prefs_smoke,
    sm_easy,
    sm_hard,
    sm_lemma31,
)
from matchbench.families.smarriage.problem import Preferences
from matchbench.families.smarriage.refs import GaleShapley

PROBLEM = get_problem("smarriage")
SOURCE = "gs_prog's standard output"


def _instances() -> list[Preferences]:
    return [prefs_smoke(name=n) for n in SMOKE] + [
        sm_easy(60, seed=3),
        sm_hard(7, seed=1),
        sm_lemma31(n_men=25, n_women=18, avg_degree=3.0, seed=2),
        # one-sided entries, purged when the instance is built: the file holds the rest
        Preferences.from_lists([[1, 0], [0], []], [[1, 2], [0]], name="purged"),
        Preferences.from_lists([], [], name="empty"),
    ]


INSTANCES = _instances()
IDS = [i.name for i in INSTANCES]


def _lists(p: Preferences) -> tuple[list[list[int]], list[list[int]]]:
    men = [p.man_list(m).tolist() for m in range(p.n_men)]
    women = [p.woman_list(w).tolist() for w in range(p.n_women)]
    return men, women


def _gs(inst: Preferences) -> np.ndarray:
    s = configured(GaleShapley)
    s.prepare(inst)
    s.run()
    return np.asarray(s.result().wife, dtype=np.int64)


def _check(inst: Preferences, answer) -> None:
    assert answer.proposals is None
    v = PROBLEM.verify(inst, answer)
    assert v.verified is True, v.reason


def test_the_formats_are_declared_and_documented():
    f = family_formats("smarriage")
    assert set(f.writers) == {"prefs"}
    assert set(f.readers) == {"wife", "pairs"}
    assert f.batch_writers == {} and f.batch_readers == {}
    for fn in [*f.writers.values(), *f.readers.values()]:
        doc = (fn.__doc__ or "").strip().splitlines()
        assert doc and doc[0].strip() and len(doc) > 2, fn.__name__


@pytest.mark.parametrize("inst", INSTANCES, ids=IDS)
def test_prefs_file_reads_back_the_same_instance(inst, tmp_path):
    path = tmp_path / "instance"  # no suffix, as the instance cache names them
    F.write_prefs(inst, path)
    back = prefs_file(path)
    assert (back.n_men, back.n_women) == (inst.n_men, inst.n_women)
    assert back.purged == 0  # the written lists are the purged ones
    assert _lists(back) == _lists(inst)
    if not inst.master:
        for a in ("mptr", "mlist", "wptr", "wlist", "mrank"):
            assert np.array_equal(getattr(back, a), getattr(inst, a)), a
    # and the same answer
    assert np.array_equal(_gs(back), _gs(inst))


def test_the_text_is_the_documented_one(tmp_path):
    inst = prefs_smoke(name="empty_lists")  # men [[], [0, 2], [2], []], women [[1], [], [2, 1]]
    F.write_prefs(inst, tmp_path / "p")
    assert (tmp_path / "p").read_text() == "4 3\n\n0 2\n2\n\n1\n\n2 1\n"
    hard = prefs_smoke(name="hard4")
    F.write_prefs(hard, tmp_path / "h")
    assert (tmp_path / "h").read_text() == "4 4\n" + "2 0 3 1\n" * 4 + "1 3 0 2\n" * 4


def _wife_text(wife: np.ndarray) -> bytes:
    return ("# wives\n" + " ".join(map(str, wife.tolist())) + "\n").encode()


def _pairs_text(wife: np.ndarray) -> bytes:
    men = np.flatnonzero(wife >= 0)
    men = men[np.random.default_rng(2).permutation(men.shape[0])]
    return ("% couples\n\n# man woman\n" + "\r\n".join(f"{m}\t{int(wife[m])}" for m in men.tolist())).encode()


@pytest.mark.parametrize("fmt", sorted(F.READERS))
@pytest.mark.parametrize("inst", INSTANCES, ids=IDS)
def test_the_man_optimal_matching_reads_back_and_verifies(inst, fmt):
    wife = _gs(inst)
    data = _wife_text(wife) if fmt == "wife" else _pairs_text(wife)
    answer = F.READERS[fmt](inst, data, SOURCE)
    assert np.array_equal(answer.wife, wife)
    _check(inst, answer)


def test_a_woman_married_twice_is_for_the_verifier():
    inst = prefs_smoke(name="textbook")
    wife = _gs(inst)
    wife[1] = wife[0]
    for fmt, data in (("wife", _wife_text(wife)), ("pairs", _pairs_text(wife))):
        v = PROBLEM.verify(inst, F.READERS[fmt](inst, data, SOURCE))
        assert v.verified is False and "married twice" in v.reason


INST = prefs_smoke(name="textbook")  # 4 men, 4 women

HOSTILE = {
    "wife": [
        (b"", "empty"),
        (b"# nothing here\n\n", "only comments"),
        (b"Killed\n", "line 1: 'Killed' is not an integer"),
        (b"0 1 2\n", "3 integers, expected 4 (one wife per man)"),
        (b"0 1\n2 3\n-1\n", "5 integers, expected 4 (one wife per man); the first extra one is on line 3"),
        (b"0 1 nan 3", "line 1: 'nan' is not an integer"),
        (b"0 1 1e400 3", "'1e400' is not an integer"),
        (b"0 1 2 99999999999999999999", "out of the int64 range"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "is not an integer"),
        (b"0 1 2 4\n", "line 1: man 3's wife 4 is outside [-1, 4)"),
        (b"0\n1\n-2\n3\n", "line 3: man 2's wife -2 is outside [-1, 4)"),
    ],
    "pairs": [
        (b"", "empty"),
        (b"   \n\n", "empty"),
        (b"0 1\nxyz\n", "line 2: 'xyz' is not two integers"),
        (b"0 1 2\n", "line 1: '0 1 2' is not two integers"),
        (b"0 nan\n", "'nan' is not an integer"),
        (b"1e400 0\n", "'1e400' is not an integer"),
        (b"4 0\n", "line 1: man 4 is outside [0, 4)"),
        (b"0 -1\n", "line 1: woman -1 is outside [0, 4)"),
        (b"2 0\n# c\n2 1\n", "line 3: man 2 is married twice (lines 1 and 3)"),
    ],
}
HOSTILE_CASES = [(fmt, data, msg) for fmt, cases in HOSTILE.items() for data, msg in cases]


@pytest.mark.parametrize(("fmt", "data", "msg"), HOSTILE_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(HOSTILE_CASES)])
def test_hostile_output_is_an_answer_error(fmt, data, msg):
    with pytest.raises(AnswerError) as info:
        F.READERS[fmt](INST, data, SOURCE)
    text = str(info.value)
    assert text.startswith(SOURCE), text
    assert msg in text, text


def test_no_couples_needs_a_comment():
    inst = Preferences.from_lists([[], []], [[]], name="nobody")
    _check(inst, F.read_pairs(inst, b"# no pairs\n", SOURCE))
    _check(inst, F.read_wife(inst, b"-1 -1\n", SOURCE))
