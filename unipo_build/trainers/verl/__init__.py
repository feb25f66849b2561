"""verl: the importer of a verl run and the mapping of its config to the registry's kinds."""
