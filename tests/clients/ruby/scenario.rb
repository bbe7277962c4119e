# The Debian-driver scenario through the Ruby driver Debian packages (ruby-mongo 2.5.1): the steps
# tests/clients/debian_drivers.py lists, each checked. The connection string comes in
# MAYFLY_URI. Prints "ok" when every check passed; a failure raises (exit code 1).
require 'mongo'

Mongo::Logger.logger.level = Logger::WARN

def check(condition, what)
  raise "check failed: #{what}" unless condition
end

client = Mongo::Client.new(ENV.fetch('MAYFLY_URI'), database: 'drivers_ruby', server_selection_timeout: 10)
admin = client.use('admin').database
db = client.database
db.drop

ids = ->(coll) { coll.find.sort(_id: 1).map { |d| d['_id'] } }

# CRUD, on a collection created through the driver.
items = client[:items]
items.create
items.insert_one(_id: 1, name: 'one')
check(items.find(_id: 1).first['name'] == 'one', 'find one')
r = items.update_one({ _id: 1 }, '$set' => { name: 'uno' })
check(r.matched_count == 1 && r.modified_count == 1, "update #{r.inspect}")
check(items.find(_id: 1).first['name'] == 'uno', 'updated')
check(items.delete_one(_id: 1).deleted_count == 1, 'delete')
check(items.count == 0, 'empty after delete')

# A cursor over 1,000 documents in batches of 50.
items.insert_many((0...1000).map { |i| { _id: i, n: i, parity: i % 2 } })
seen = 0
items.find.sort(_id: 1).batch_size(50).each do |d|
  check(d['_id'] == seen, "cursor order at #{seen}")
  seen += 1
end
check(seen == 1000, "cursor saw #{seen}")

# An upsert, then the same update matching the upserted document.
r = items.update_one({ _id: 'u' }, { '$set' => { v: 1 } }, upsert: true)
check(r.upserted_id == 'u' && r.matched_count == 0, "upsert #{r.inspect}")
r = items.update_one({ _id: 'u' }, { '$set' => { v: 1 } }, upsert: true)
check(r.upserted_id.nil? && r.matched_count == 1, "matched #{r.inspect}")

# aggregate: $match + $group.
groups = items.aggregate([
  { '$match' => { n: { '$gte' => 500 } } },
  { '$group' => { _id: '$parity', count: { '$sum' => 1 } } },
  { '$sort' => { _id: 1 } }
]).to_a
check(groups == [{ '_id' => 0, 'count' => 250 }, { '_id' => 1, 'count' => 250 }], groups.inspect)

# The _ts TTL index through the driver's index API, a document's own ttl, exact expiry.
admin.command(reaper: 'pause')
admin.command(reaper: 'runOnce')
expiring = client[:expiring]
expiring.indexes.create_one({ _ts: 1 }, expire_after: 10)
index = expiring.indexes.find { |i| i['name'] == '_ts_1' }
check(index && index['expireAfterSeconds'] == 10, "listIndexes shows _ts_1: #{index.inspect}")
expiring.insert_many([
  { _id: 'default' },
  { _id: 'own', ttl: BSON::Int64.new(20) },
  { _id: 'never', ttl: -1 }
])
admin.command(advanceClock: 9)
check(ids.call(expiring) == %w[default never own], "all three at T+9: #{ids.call(expiring)}")
admin.command(advanceClock: 1)
check(ids.call(expiring) == %w[never own], "T+10: #{ids.call(expiring)}")
admin.command(advanceClock: 10)
check(ids.call(expiring) == %w[never], "T+20: #{ids.call(expiring)}")
reaped = admin.command(reaper: 'runOnce').first['reaped']
check(reaped == 2, "reaped #{reaped}")
admin.command(reaper: 'resume')

# A duplicate key, with its code.
begin
  items.insert_one(_id: 7)
  raise 'duplicate _id accepted'
rescue Mongo::Error::OperationFailure => e
  # 2.5 has no error-code reader: the code is the message's last word, in parentheses.
  check(e.message.start_with?('E11000 duplicate key error') && e.message.end_with?('(11000)'), e.message)
end

client.close
puts 'ok'
