// store_sqlite_db_test.cpp — the RAII layer over SQLite (store/sqlite_db.h, internal to core):
// transactions roll back unless committed, errors name the statement and the file, a lock says so.
#include <gtest/gtest.h>

#include "store/src/sqlite_db.h"  // the RAII layer is internal to core; tested here too
#include "support/store_fixture.h"

using namespace qklab;
using namespace qklab::testsupport;

TEST_F(StoreTest, TransactionRollsBackUnlessCommitted) {
    Database db(m_path);
    db.exec("CREATE TABLE t(x INTEGER)");
    {
        Transaction tx(db);
        db.exec("INSERT INTO t VALUES(1)");
    }
    EXPECT_EQ(db.queryInt("SELECT count(*) FROM t"), 0);
    {
        Transaction tx(db);
        db.exec("INSERT INTO t VALUES(1)");
        tx.commit();
    }
    EXPECT_EQ(db.queryInt("SELECT count(*) FROM t"), 1);
    std::string msg;
    EXPECT_EQ(errorCodeOf([&] { Statement st(db, "SELECT nope FROM t"); }, &msg),
              ErrorCode::Database);
    EXPECT_NE(msg.find("SELECT nope FROM t"), std::string::npos) << msg;
    EXPECT_NE(msg.find(m_path), std::string::npos) << msg;
}

TEST_F(StoreTest, LockedDatabaseGivesAClearError) {
    { RunStore s(m_path); }
    Database holder(m_path);
    Transaction lock(holder);  // holds the write lock
    holder.exec("INSERT INTO runs(name) VALUES('holder')");
    Database impatient(m_path, /*busyTimeoutMs=*/50);
    std::string msg;
    EXPECT_EQ(errorCodeOf([&] { Transaction tx(impatient); }, &msg), ErrorCode::Database);
    EXPECT_NE(msg.find("locked"), std::string::npos) << msg;
    EXPECT_NE(msg.find(m_path), std::string::npos) << msg;
    // Reading alongside the writer still works: that is what WAL is for.
    EXPECT_EQ(impatient.queryInt("SELECT count(*) FROM runs"), 0);
}

// Store code binds in order (bindAll, absent optionals as NULL) and reads columns by name,
// wherever the SELECT list puts them; a name the statement lacks is a bug, said as one.
TEST_F(StoreTest, BindAllAndNamedReads) {
    Database db(m_path);
    db.exec("CREATE TABLE t(a INTEGER, b TEXT, c REAL)");
    Statement ins(db, "INSERT INTO t VALUES(?, ?, ?)");
    ins.bindAll(std::optional<int64_t>(7), std::optional<std::string>(), 0.5).exec();
    ins.bindAll(std::optional<int64_t>(), std::optional<std::string>("x"), nullptr).exec();
    Statement st(db, "SELECT c, b, a AS renamed FROM t ORDER BY rowid");
    ASSERT_TRUE(st.step());
    EXPECT_EQ(st.columnOptInt("renamed"), 7);
    EXPECT_TRUE(st.isNull("b"));
    EXPECT_EQ(st.columnReal("c"), 0.5);
    ASSERT_TRUE(st.step());
    EXPECT_EQ(st.columnOptInt("renamed"), std::nullopt);
    EXPECT_EQ(st.columnText("b"), "x");
    EXPECT_EQ(st.columnOptReal("c"), std::nullopt);
    std::string msg;
    EXPECT_EQ(errorCodeOf([&] { st.columnInt("a"); }, &msg), ErrorCode::Internal);
    EXPECT_NE(msg.find("no column 'a'"), std::string::npos) << msg;
}
