"""Did it learn? Held-out verdicts, measured effects, claims and diagnoses."""
