-- template: renders an HTML table from a JSON request with a small template engine (like
-- FunctionBench's chameleon). The JSON decoder and the template compiler are plain Lua; the
-- template is compiled once, at load time, before the snapshot.

-- JSON decoding ----------------------------------------------------------------------------------
local null = setmetatable({}, { __tostring = function() return "null" end })

local decode
do
	local s, pos
	local escapes = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" }

	local function fail(msg)
		error(string.format("bad JSON at byte %d: %s", pos, msg), 0)
	end

	local function skip()
		pos = s:find("[^ \t\r\n]", pos) or #s + 1
	end

	local function str()
		local parts = {}
		pos = pos + 1
		while true do
			local a = s:find('["\\]', pos)
			if not a then fail("unterminated string") end
			parts[#parts + 1] = s:sub(pos, a - 1)
			if s:byte(a) == 34 then
				pos = a + 1
				return table.concat(parts)
			end
			local c = s:sub(a + 1, a + 1)
			if c == "u" then
				local cp = tonumber(s:match("^%x%x%x%x", a + 2) or fail("bad \\u escape"), 16)
				pos = a + 6
				local lo = cp >= 0xd800 and cp < 0xdc00 and s:match("^\\u([dD][c-fC-F]%x%x)", pos)
				if lo then
					cp = 0x10000 + (cp - 0xd800) * 0x400 + (tonumber(lo, 16) - 0xdc00)
					pos = pos + 6
				end
				parts[#parts + 1] = utf8.char(cp)
			elseif escapes[c] then
				parts[#parts + 1] = escapes[c]
				pos = a + 2
			else
				fail("bad escape")
			end
		end
	end

	local function number()
		local _, e = s:find("^-?%d+", pos)
		if not e then fail("unexpected character") end
		e = select(2, s:find("^%.%d+", e + 1)) or e
		e = select(2, s:find("^[eE][-+]?%d+", e + 1)) or e
		local n = tonumber(s:sub(pos, e))
		pos = e + 1
		return n
	end

	local literals = { t = { "true", true }, f = { "false", false }, n = { "null", null } }

	local function value()
		skip()
		local c = s:sub(pos, pos)
		if c == "{" or c == "[" then
			local t, close = {}, c == "{" and "}" or "]"
			pos = pos + 1
			skip()
			if s:sub(pos, pos) == close then
				pos = pos + 1
				return t
			end
			repeat
				if c == "{" then
					skip()
					if s:sub(pos, pos) ~= '"' then fail("expected a key") end
					local k = str()
					skip()
					if s:sub(pos, pos) ~= ":" then fail("expected ':'") end
					pos = pos + 1
					t[k] = value()
				else
					t[#t + 1] = value()
				end
				skip()
				local sep = s:sub(pos, pos)
				if sep ~= "," and sep ~= close then fail("expected ',' or '" .. close .. "'") end
				pos = pos + 1
			until sep == close
			return t
		elseif c == '"' then
			return str()
		elseif literals[c] then
			local word, v = table.unpack(literals[c])
			if s:sub(pos, pos + #word - 1) ~= word then fail("unexpected word") end
			pos = pos + #word
			return v
		end
		return number()
	end

	decode = function(text)
		s, pos = text, 1
		local v = value()
		skip()
		if pos <= #s then fail("trailing characters") end
		return v
	end
end

-- Templates: {{ expr }} inserts escaped text, {% statement %} is Lua ----------------------------
local html = { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&#39;" }

-- the text of a cell: nested arrays are joined with ", ", nested objects elided
local function text(v)
	if v == nil or v == null then return "" end
	if type(v) ~= "table" then return tostring(v) end
	if v[1] == nil and next(v) ~= nil then return "{...}" end
	local t = {}
	for i, x in ipairs(v) do t[i] = text(x) end
	return table.concat(t, ", ")
end

local function escape(v)
	return (text(v):gsub("[&<>\"']", html))
end

local function compile(tpl, name)
	local code, pos = { "local _esc, _concat = ...\nreturn function(_ENV)\nlocal _out = {}\n" }, 1
	while pos <= #tpl do
		local a, _, kind = tpl:find("{([{%%])", pos)
		code[#code + 1] = string.format("_out[#_out + 1] = %q\n", tpl:sub(pos, (a or #tpl + 1) - 1))
		if not a then break end
		local close = kind == "{" and "}}" or "%}"
		local b, e = tpl:find(close, a + 2, true)
		if not b then error(name .. ": unclosed {" .. kind) end
		local body = tpl:sub(a + 2, b - 1)
		code[#code + 1] = kind == "{" and "_out[#_out + 1] = _esc(" .. body .. ")\n" or body .. "\n"
		pos = e + 1
	end
	code[#code + 1] = "return _concat(_out)\nend\n"
	return assert(load(table.concat(code), "=" .. name, "t", {}))(escape, table.concat)
end

local page = compile([[
<!DOCTYPE html>
<html>
<head><meta charset="utf-8"><title>{{ title }}</title></head>
<body>
<h1>{{ title }}</h1>
<table>
<thead><tr>{% for _, c in ipairs(columns) do %}<th>{{ c }}</th>{% end %}</tr></thead>
<tbody>
{% for i, row in ipairs(rows) do %}<tr class="{{ i % 2 == 0 and 'even' or 'odd' }}">{% for _, v in ipairs(cells(row)) do %}<td>{{ v }}</td>{% end %}</tr>
{% end %}</tbody>
</table>
<p>{{ #rows }} rows, {{ #columns }} columns</p>
</body>
</html>
]], "page.html")

function handler(input)
	local req = decode(input)
	if type(req) ~= "table" or type(req.rows) ~= "table" then
		error("the request must be a JSON object with a \"rows\" array")
	end
	local columns = type(req.columns) == "table" and req.columns or {}
	local env = {
		title = req.title == nil and "Table" or req.title,
		columns = columns,
		rows = req.rows,
		ipairs = ipairs,
		-- a row is an array of cells, or an object whose fields are named by columns
		cells = function(row)
			if type(row) ~= "table" then return { row } end
			if row[1] ~= nil or next(row) == nil then return row end
			local t = {}
			for i, c in ipairs(columns) do t[i] = row[c] == nil and null or row[c] end
			return t
		end,
	}
	return page(env)
end
