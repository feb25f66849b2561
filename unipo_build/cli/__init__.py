"""The command line, on top of everything: the only place that parses arguments."""
