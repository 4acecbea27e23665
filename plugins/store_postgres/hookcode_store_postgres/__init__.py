"""store_postgres: placeholder"""
