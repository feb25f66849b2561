"""TRL: the token tap that reads GRPOTrainer's loss, its files, and the importer of a TRL run."""
