"""Everything about one delivery, independent of any UI."""
