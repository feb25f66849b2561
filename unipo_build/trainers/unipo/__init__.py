"""UNIPO's published log format, as one more trainer: its importer and `unipo publish`."""
