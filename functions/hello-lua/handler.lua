-- hello-lua: answers "Hello, <request>!" (trailing whitespace trimmed), "Hello, world!" if empty.
local space = { [9] = true, [10] = true, [13] = true, [32] = true }

function handler(input)
	local n = #input
	while n > 0 and space[input:byte(n)] do
		n = n - 1
	end
	return "Hello, " .. (n > 0 and input:sub(1, n) or "world") .. "!\n"
end
