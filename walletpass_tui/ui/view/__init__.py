"""What the dashboard shows, without Textual: columns, windows over the log, queries, header text.

Pure helpers, tested on their own; an import-linter contract keeps Textual and rich out of them.
"""
