// hello-js: answers "Hello, <request>!" (trailing whitespace trimmed), "Hello, world!" if empty.
function handler(input) {
	var n = input.length;
	while (n > 0 && ' \t\r\n'.indexOf(input.charAt(n - 1)) >= 0)
		n--;
	return 'Hello, ' + (n > 0 ? input.substring(0, n) : 'world') + '!\n';
}
