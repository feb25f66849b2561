"""prime-rl: the importer of a prime-rl run and the mapping of its config to the registry's kinds."""
