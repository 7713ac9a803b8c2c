"""The Textual dashboard. Only this package imports textual."""
