"""One package per problem family: data model and certificate, datasets, solvers."""
