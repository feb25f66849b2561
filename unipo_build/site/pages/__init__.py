"""The chapters' computed facts and figures, grouped by the question they answer."""
