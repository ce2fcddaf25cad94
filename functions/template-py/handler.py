# An HTML page rendered in pure Python (FunctionBench's chameleon): a table of the request's
# words, escaped; the template is parsed once, before the snapshot.
import html
import string

PAGE = string.Template("<html><head><title>$title</title></head><body>\n"
                       "<table>\n$rows</table>\n<p>$count words</p></body></html>\n")
ROW = string.Template("<tr><td>$i</td><td>$word</td><td>$length</td></tr>\n")


def handler(input):
    words = (input or "<b>ember</b> & friends").split()
    rows = "".join(ROW.substitute(i=i, word=html.escape(w), length=len(w))
                   for i, w in enumerate(words))
    return PAGE.substitute(title=html.escape(words[0]), rows=rows, count=len(words))
