"""``python -m perfmodel.reproduce --readme-table``: print the README's item table."""
import sys

from perfmodel.reproduce import items_markdown_table

if sys.argv[1:] == ["--readme-table"]:
    print(items_markdown_table())
else:
    sys.exit("usage: python -m perfmodel.reproduce --readme-table   (the command is `perfmodel reproduce`)")
