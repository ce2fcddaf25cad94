# The smallest handler: a greeting for the request.
def handler(input):
    return "Hello, " + (input or "world") + "!\n"
