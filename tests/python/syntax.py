# A syntax error on line 3.
def handler(input):
    return = input
