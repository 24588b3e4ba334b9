"""The live plots and their style."""
