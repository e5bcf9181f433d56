"""kraftpy"""
