"""The Algorithm Explainer: an objective taken apart, filled with a token's real numbers."""
