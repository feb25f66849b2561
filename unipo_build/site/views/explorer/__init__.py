"""The Training Explorer: a whole run as a radial plot."""
