"""The annotation protocols (tasks): their choices, units and valid submissions. Django-free."""
