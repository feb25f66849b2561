"""The core: the run-log schema, specs and the component registry, the component math, the objective,
the run-log reader and writer, recomputation, the run catalogue. It imports only itself; training
imports only it."""
