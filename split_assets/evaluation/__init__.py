"""Candidate evaluation on the frozen pools: McNemar tests, control runs, power."""
