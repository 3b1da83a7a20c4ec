"""The demo spiders: ``tour`` (token demobot) and ``polite`` (token politebot)."""
