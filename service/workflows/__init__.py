"""The use cases of the service, between its edges (API, pages, CLIs) and the domain (analysis, store, profiles)."""
