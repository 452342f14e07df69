"""Every read of the annotations app that holds more than a one-line filter, one module per area."""
