"""The snapshot scenarios, one module each: NUM, TITLE, run(ctx) and a docstring that is
the scenario's row in docs/testing.md (run.py --table).  run(ctx) returns (VMs, spin
figure, detail lines), raises scenario_lib.NotApplicable when the kernel cannot show
it, and any other exception fails it."""
