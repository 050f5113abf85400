"""Each paper's own privacy bound, as the paper states it (one module per paper)."""
