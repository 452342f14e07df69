"""Web pages, one module per audience. Each view checks access, calls one selector or service, and renders."""
