"""The misconception catalogue's rows, one module per family of tasks; ``reference.catalogue``
joins them and answers questions about them."""
