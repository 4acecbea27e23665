"""glob tool."""
