"""protocol"""
