// hello-node: OpenFaaS's node18 form for Node.js (--runtime js): "Hello, <request>!".
'use strict';
module.exports = async (event, context) => {
	const who = String(event.body ?? '').trim() || 'world';
	return context.status(200).succeed(`Hello, ${who}!\n`);
};
