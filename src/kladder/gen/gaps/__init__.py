"""One module per gap; each yields Points with a one-line `why` and never runs a kernel.
Which module serves which rung is kladder.core.rungs' table."""
