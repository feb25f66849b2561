"""Does it hold at scale? The run sets side by side."""
