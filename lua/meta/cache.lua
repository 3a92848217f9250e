---@meta luagent.cache
-- luagent.cache: the model-call cache (lua/luagent/cache.lua). A run with the
-- cache on answers a model request it has seen before from disk; only
-- complete, successful answers are stored.
--
--   luagent run recipe.lua --cache           read and fill (.luagent/cache/ beside the recipe)
--   luagent run recipe.lua --cache=refresh   call the model every time, refill
--   luagent run recipe.lua --no-cache        off, whatever the recipe's YAML says
--   cache: true | refresh                    at the top of the recipe's YAML (luagent.config)
--   luagent cache stats|clear [DIR] [--older-than 14d]
--
-- The folder: setting cache.dir, else $LUAGENT_CACHE, else <recipe folder>/.luagent/cache.
-- LuaLS annotations: definitions only.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---@alias luagent.CacheMode "on"|"refresh"

---@class luagent.CacheOpenOptions
---@field dir string the cache folder (made on the first write)
---@field mode? luagent.CacheMode "on" (default): read and fill; "refresh": fill, never read
---@field recipe? string the recipe's path: names the list of its last run's request keys

---What a cache key is made of.
---@class luagent.CacheRequest
---@field provider string "openai" | "openai_responses" | "anthropic"
---@field base_url string
---@field body table the provider's request body (stream fields and tool timings are left out of the key)

---A stored answer.
---@class luagent.CacheResult
---@field text string?
---@field tool_calls {id: string?, name: string, arguments_json: string}[]
---@field finish_reason string
---@field usage luagent.Usage
---@field model string?

---One cache file: DIR/<2 hex>/<key>.json.
---@class luagent.CacheEntry
---@field v integer the format's version (1)
---@field key string
---@field created integer seconds since the epoch
---@field provider string
---@field model string
---@field request table the normalized request body (what the key was made of)
---@field result luagent.CacheResult
---@field cost number? dollars the live call cost (nil: price unknown)
---@field duration number? seconds the live call took

---A model call's lookup (h:lookup): the stored answer, or nil to go live.
---@class luagent.CacheLookup
---@field key string
---@field request table the normalized request body
---@field position integer this call's place in the run
---@field entry luagent.CacheEntry?

---The run's counters.
---@class luagent.CacheStats
---@field calls integer model calls looked up
---@field hits integer answered from the cache
---@field live integer sent to the provider
---@field misses integer looked up and not found (mode "on")
---@field corrupt integer entries found torn or unreadable (each a miss, rewritten by the live call)
---@field saved_cost number dollars the hits cost when they were live
---@field saved_unknown boolean some hit's price was unknown

---What `luagent cache stats` prints.
---@class luagent.CacheFolderStats
---@field dir string
---@field entries integer
---@field bytes integer
---@field oldest integer? seconds since the epoch
---@field newest integer?
---@field by_model table<string, {entries: integer, bytes: integer}>
---@field unreadable integer

---What `luagent cache clear` did.
---@class luagent.CacheClearResult
---@field removed integer entries removed
---@field bytes integer their size
---@field kept integer entries kept (newer than older_than)

---A run's cache handle (run.current().cache).
---@class luagent.Cache
---@field dir string
---@field mode luagent.CacheMode
---@field stats luagent.CacheStats
local Cache = {}

---@class luagent.cache
local cache = {}

---A cache handle on a folder. A path that is there but is not a folder: nil, err (kind "config").
---@param opts luagent.CacheOpenOptions
---@return luagent.Cache? h
---@return luagent.Error? err
function cache.open(opts) end

---The key of a request (sha256 hex) and the normalized body it was made of.
---@param request luagent.CacheRequest
---@return string key
---@return table normalized
function Cache:key(request) end

---The entry stored under key; nil when there is none or it is torn or corrupt.
---@param key string
---@return luagent.CacheEntry?
function Cache:get(key) end

---Stores an entry (a whole file renamed into place). A failed write is one
---warning on stderr per handle and nil; never an error.
---@param key string
---@param entry luagent.CacheEntry
---@return true?
function Cache:put(key, entry) end

---What the model call path asks first: the key, and the stored answer when
---mode is "on" and there is one. Counts hits and misses; at the first miss
---after hits it emits a cache_live event ("turns 1-6 from cache; live from
---turn 7: instructions changed"). req.turn and req.agent say which agent turn asks.
---@param m luagent.Model
---@param req luagent.CompleteRequest
---@param body table the provider's request body
---@return luagent.CacheLookup
function Cache:lookup(m, req, body) end

---After a live call: stores its complete, successful answer.
---@param look luagent.CacheLookup
---@param result luagent.CompleteResult
function Cache:stored(look, result) end

---After a live call that failed: nothing is stored.
---@param look luagent.CacheLookup
function Cache:failed(look) end

---At the run's end: saves the order of this run's keys (for the next run's
---"live from turn N: why") and gives the cache_summary event ("N model calls:
---K from cache, L live, $X saved"), or nil when no model call was made.
---@return luagent.Event?
function Cache:finish() end

---The cache folder: settings.cache.dir, else $LUAGENT_CACHE, else <recipe_dir>/.luagent/cache.
---@param settings table? the run's settings
---@param recipe_dir string?
---@return string
function cache.dir_for(settings, recipe_dir) end

---Opens a run's cache in mode (run.cache); raises what cannot be used.
---@param run table the run (luagent.run.current())
---@param mode luagent.CacheMode
---@param dir? string the folder (default: cache.dir_for the run)
---@return luagent.Cache
function cache.for_run(run, mode, dir) end

---The `cache:` value at the top of a recipe's YAML (true | "refresh" | false,
---or {mode, dir}; a table without mode switches nothing on): switches the
---run's cache on unless the command line said --cache, --cache=refresh or
---`--no-cache`. A value of another kind raises (kind "config").
---@param value any
---@param file string the YAML file, for messages and a relative dir
function cache.from_config(value, file) end

---What a cache folder holds (a missing folder holds nothing).
---@param dir string
---@return luagent.CacheFolderStats? stats
---@return luagent.Error? err
function cache.stats(dir) end

---Removes the cache's files in dir (only its own: entries, run key lists,
---temp files); with older_than (seconds), only those written before then.
---@param dir string
---@param opts? {older_than?: number}
---@return luagent.CacheClearResult? result
---@return luagent.Error? err
function cache.clear(dir, opts) end

return cache
