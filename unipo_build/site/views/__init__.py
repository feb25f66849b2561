"""The three views (Training Explorer, Step Inspector, Algorithm Explainer) and comparison."""
