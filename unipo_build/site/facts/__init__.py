"""Facts of runs and specs that many pages quote: a run's numbers, a spec's slots, seeds, series."""
