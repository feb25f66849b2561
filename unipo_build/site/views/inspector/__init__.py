"""The Step Inspector: one update, its groups, and tokens coloured by objective."""
