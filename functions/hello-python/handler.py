# hello-python: OpenFaaS's python3-http form for CPython (--runtime python): "Hello, <request>!".
def handle(event, context):
    who = event.body.decode().strip() or "world"
    return {"statusCode": 200, "body": "Hello, %s!\n" % who}
