"""The service's database: the SQLAlchemy handle (db), the models, storing uploads (ingest), running and
storing analyses (analyses), and the summary queries the overview reads (queries)."""
