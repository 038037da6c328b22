"""Where the users' collective time goes, per library (issue 33)."""
