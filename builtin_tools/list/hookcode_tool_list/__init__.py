"""list tool."""
