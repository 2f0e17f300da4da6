"""Building the course from its sources: notebooks of both editions, the glossary, localisation, the first
cell, and new stages from templates. It imports every room below it, not integrations or commands.
"""
