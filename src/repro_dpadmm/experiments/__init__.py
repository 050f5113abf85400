"""One module per paper: one function per figure/table, config in, tidy results out."""
