"""Diagnosis: what to send to the judge (plan), the judge's view of each answer (cases), and
the leased, resumable pass that sends it (runner)."""
