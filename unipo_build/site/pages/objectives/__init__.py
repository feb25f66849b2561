"""How the objectives differ: aggregation, the family tree, the ladder, the clip and group lessons."""
