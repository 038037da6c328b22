"""The command areas of `pgmpi` on top of the service: admin (users, tokens, database, serve), analysis
(analyze, explain) and profile (publish, roll back, status).  Each module is a COMMANDS list named in
pyproject.toml; they call service/workflows/ and never hold a use case of their own."""
