"""The tools layer: the commands (cli/), the API, explore, bisect, bench, the zoo's runner, the debugger's hooks; nothing below imports them."""
