"""One module per check; see each module's docstring for what its `score` means."""
