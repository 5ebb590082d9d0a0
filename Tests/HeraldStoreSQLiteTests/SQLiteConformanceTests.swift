import HeraldStoreConformance
import Testing

/// Every store conformance rule against SQLite, one test per rule.
@Suite("SQLite store conformance", .timeLimit(.minutes(2)))
struct SQLiteConformanceTests {
    @Test func operatorsAndConsoleSessions() async throws {
        try await SQLiteEngine.check(.operatorsAndConsoleSessions)
    }

    @Test func importsOperatorsButNoSessions() async throws {
        try await SQLiteEngine.check(.importsOperatorsButNoSessions)
    }

    @Test func pushesBySubjectAndByID() async throws {
        try await SQLiteEngine.check(.pushesBySubjectAndByID)
    }

    @Test func pushActivityCountsFinishedPushesByMinute() async throws {
        try await SQLiteEngine.check(.pushActivityCountsFinishedPushesByMinute)
    }

    @Test func pendingCallbacksAndRingingCalls() async throws {
        try await SQLiteEngine.check(.pendingCallbacksAndRingingCalls)
    }

    @Test func relayChangesAnswerInOneBatch() async throws {
        try await SQLiteEngine.check(.relayChangesAnswerInOneBatch)
    }

    @Test func storeWorkIsAppliedAlone() async throws {
        try await SQLiteEngine.check(.storeWorkIsAppliedAlone)
    }

    @Test func changesAnswerEachInOneTransaction() async throws {
        try await SQLiteEngine.check(.changesAnswerEachInOneTransaction)
    }

    @Test func queuedMessagesAreCountedPerApp() async throws {
        try await SQLiteEngine.check(.queuedMessagesAreCountedPerApp)
    }

    @Test func apiKeysAndTheAuditLog() async throws {
        try await SQLiteEngine.check(.apiKeysAndTheAuditLog)
    }

    @Test func messagesToNobodyAreHeldOnce() async throws {
        try await SQLiteEngine.check(.messagesToNobodyAreHeldOnce)
    }

    @Test func heldMessagesEndAndAppsKeepTheirPolicy() async throws {
        try await SQLiteEngine.check(.heldMessagesEndAndAppsKeepTheirPolicy)
    }

    @Test func claimsAreExclusive() async throws {
        try await SQLiteEngine.check(.claimsAreExclusive)
    }

    @Test func leasesLapseAndComeBack() async throws {
        try await SQLiteEngine.check(.leasesLapseAndComeBack)
    }

    @Test func releaseClaimsOfARestartedOwner() async throws {
        try await SQLiteEngine.check(.releaseClaimsOfARestartedOwner)
    }

    @Test func callsFirstThenLongestWait() async throws {
        try await SQLiteEngine.check(.callsFirstThenLongestWait)
    }

    @Test func expiredAndTokenlessPushesAreFinished() async throws {
        try await SQLiteEngine.check(.expiredAndTokenlessPushesAreFinished)
    }

    @Test func voipToPushKitTokenOthersToMessagingToken() async throws {
        try await SQLiteEngine.check(.voipToPushKitTokenOthersToMessagingToken)
    }

    @Test func pushesRoundTrip() async throws {
        try await SQLiteEngine.check(.pushesRoundTrip)
    }

    @Test func completionsFinishOrRetry() async throws {
        try await SQLiteEngine.check(.completionsFinishOrRetry)
    }

    @Test func deadTokensClearedOnlyWhereStillHeld() async throws {
        try await SQLiteEngine.check(.deadTokensClearedOnlyWhereStillHeld)
    }

    @Test func idempotencyRaces() async throws {
        try await SQLiteEngine.check(.idempotencyRaces)
    }

    @Test func burstsAnswerEachAsAlone() async throws {
        try await SQLiteEngine.check(.burstsAnswerEachAsAlone)
    }

    @Test func aTokenBelongsToOneDevice() async throws {
        try await SQLiteEngine.check(.aTokenBelongsToOneDevice)
    }

    @Test func appsDevicesAndPresence() async throws {
        try await SQLiteEngine.check(.appsDevicesAndPresence)
    }

    @Test func retention() async throws {
        try await SQLiteEngine.check(.retention)
    }

    @Test func transcriptsAndDisconnects() async throws {
        try await SQLiteEngine.check(.transcriptsAndDisconnects)
    }

    @Test func outboxCountsAndNextDueTime() async throws {
        try await SQLiteEngine.check(.outboxCountsAndNextDueTime)
    }

    @Test func sealedSendersStaySealed() async throws {
        try await SQLiteEngine.check(.sealedSendersStaySealed)
    }

    @Test func chatsStartEndAndIdle() async throws {
        try await SQLiteEngine.check(.chatsStartEndAndIdle)
    }

    @Test func endedChatsArePurged() async throws {
        try await SQLiteEngine.check(.endedChatsArePurged)
    }

    @Test func claimsOnlyTheNetworksAsked() async throws {
        try await SQLiteEngine.check(.claimsOnlyTheNetworksAsked)
    }

    @Test func requeueTakesBackTheAttempt() async throws {
        try await SQLiteEngine.check(.requeueTakesBackTheAttempt)
    }

    @Test func importsAnotherStoresRecords() async throws {
        try await SQLiteEngine.check(.importsAnotherStoresRecords)
    }

    @Test func importsCallbacksCallsAndWebhookEvents() async throws {
        try await SQLiteEngine.check(.importsCallbacksCallsAndWebhookEvents)
    }

    @Test func importsKeysAuditAndHeldMessages() async throws {
        try await SQLiteEngine.check(.importsKeysAuditAndHeldMessages)
    }

    @Test func concurrentCompletionsKeepTheirOwn() async throws {
        try await SQLiteEngine.check(.concurrentCompletionsKeepTheirOwn)
    }

    @Test func liveSessionsAreLeased() async throws {
        try await SQLiteEngine.check(.liveSessionsAreLeased)
    }

    @Test func recipientsCarryTheirLiveSession() async throws {
        try await SQLiteEngine.check(.recipientsCarryTheirLiveSession)
    }

    @Test func liveHandoversAreAnsweredOnce() async throws {
        try await SQLiteEngine.check(.liveHandoversAreAnsweredOnce)
    }

    @Test func providerTokensCompareAndSet() async throws {
        try await SQLiteEngine.check(.providerTokensCompareAndSet)
    }

    @Test func providerTokenRacesHaveOneWinner() async throws {
        try await SQLiteEngine.check(.providerTokenRacesHaveOneWinner)
    }

    @Test func pushListingFilters() async throws {
        try await SQLiteEngine.check(.pushListingFilters)
    }

    @Test func pushListingPagesWithoutGapsOrRepeats() async throws {
        try await SQLiteEngine.check(.pushListingPagesWithoutGapsOrRepeats)
    }

    @Test func webhookEventsAreQueued() async throws {
        try await SQLiteEngine.check(.webhookEventsAreQueued)
    }

    @Test func webhookClaimsKeepOrderPerKey() async throws {
        try await SQLiteEngine.check(.webhookClaimsKeepOrderPerKey)
    }

    @Test func webhookClaimersNeverShareAnEvent() async throws {
        try await SQLiteEngine.check(.webhookClaimersNeverShareAnEvent)
    }

    @Test func webhookLapsedLeaseIsTakenOver() async throws {
        try await SQLiteEngine.check(.webhookLapsedLeaseIsTakenOver)
    }

    @Test func webhookEventsListAndExpire() async throws {
        try await SQLiteEngine.check(.webhookEventsListAndExpire)
    }

    @Test func webhookEventsByKey() async throws {
        try await SQLiteEngine.check(.webhookEventsByKey)
    }

    @Test func pushesByConversation() async throws {
        try await SQLiteEngine.check(.pushesByConversation)
    }

    @Test func queueCountsAgreeWithTheOutbox() async throws {
        try await SQLiteEngine.check(.queueCountsAgreeWithTheOutbox)
    }

    @Test func appWebhookIsKept() async throws {
        try await SQLiteEngine.check(.appWebhookIsKept)
    }

    @Test func pushFinalStatesWriteWebhookEvents() async throws {
        try await SQLiteEngine.check(.pushFinalStatesWriteWebhookEvents)
    }

    @Test func aPushKeepsItsTraceContext() async throws {
        try await SQLiteEngine.check(.aPushKeepsItsTraceContext)
    }

    @Test func chatDisconnectsWriteWebhookEvents() async throws {
        try await SQLiteEngine.check(.chatDisconnectsWriteWebhookEvents)
    }

    @Test func callIsWrittenWithItsIngest() async throws {
        try await SQLiteEngine.check(.callIsWrittenWithItsIngest)
    }

    @Test func callEndsOnce() async throws {
        try await SQLiteEngine.check(.callEndsOnce)
    }

    @Test func callRingingIsReportedOnce() async throws {
        try await SQLiteEngine.check(.callRingingIsReportedOnce)
    }

    @Test func dueCallsAreClaimedOnce() async throws {
        try await SQLiteEngine.check(.dueCallsAreClaimedOnce)
    }

    @Test func callStopsAreTakenOnce() async throws {
        try await SQLiteEngine.check(.callStopsAreTakenOnce)
    }

    @Test func fleetRoutesTravelWithTheToken() async throws {
        try await SQLiteEngine.check(.fleetRoutesTravelWithTheToken)
    }

    @Test func webPushKeysTravelWithTheClaim() async throws {
        try await SQLiteEngine.check(.webPushKeysTravelWithTheClaim)
    }

    @Test func callbacksAreClaimedOnceAndPushedOnce() async throws {
        try await SQLiteEngine.check(.callbacksAreClaimedOnceAndPushedOnce)
    }

    @Test func callbackAnswersCompareAndSet() async throws {
        try await SQLiteEngine.check(.callbackAnswersCompareAndSet)
    }

    @Test func callbackPushedWhenDelivered() async throws {
        try await SQLiteEngine.check(.callbackPushedWhenDelivered)
    }

    @Test func customerWaitOrdersTheQueue() async throws {
        try await SQLiteEngine.check(.customerWaitOrdersTheQueue)
    }

    @Test func nowOrNeverTravelsWithThePush() async throws {
        try await SQLiteEngine.check(.nowOrNeverTravelsWithThePush)
    }

    @Test func notificationPermissionChangesOnce() async throws {
        try await SQLiteEngine.check(.notificationPermissionChangesOnce)
    }

    @Test func messagesKeepTheirPushOptions() async throws {
        try await SQLiteEngine.check(.messagesKeepTheirPushOptions)
    }

    @Test func ingestClaimsAreHeldByTheirNode() async throws {
        try await SQLiteEngine.check(.ingestClaimsAreHeldByTheirNode)
    }

    @Test func batchesOfOutcomesKeepTheirTimes() async throws {
        try await SQLiteEngine.check(.batchesOfOutcomesKeepTheirTimes)
    }

    @Test func staleRecipientsAreRefused() async throws {
        try await SQLiteEngine.check(.staleRecipientsAreRefused)
    }

    @Test func lateOutcomesAfterALapsedLease() async throws {
        try await SQLiteEngine.check(.lateOutcomesAfterALapsedLease)
    }

    @Test func receiptsAreRecordedOncePerStage() async throws {
        try await SQLiteEngine.check(.receiptsAreRecordedOncePerStage)
    }

    @Test func deadlinesAreSettledOnce() async throws {
        try await SQLiteEngine.check(.deadlinesAreSettledOnce)
    }

    @Test("this suite runs every rule: a new rule fails here until it has its test above")
    func runsEveryRule() {
        let tested: Set<StoreConformance.Rule> = [
            .claimsAreExclusive,
            .leasesLapseAndComeBack,
            .releaseClaimsOfARestartedOwner,
            .callsFirstThenLongestWait,
            .expiredAndTokenlessPushesAreFinished,
            .voipToPushKitTokenOthersToMessagingToken,
            .pushesRoundTrip,
            .completionsFinishOrRetry,
            .concurrentCompletionsKeepTheirOwn,
            .deadTokensClearedOnlyWhereStillHeld,
            .idempotencyRaces,
            .burstsAnswerEachAsAlone,
            .aTokenBelongsToOneDevice,
            .appsDevicesAndPresence,
            .retention,
            .transcriptsAndDisconnects,
            .outboxCountsAndNextDueTime,
            .sealedSendersStaySealed,
            .chatsStartEndAndIdle,
            .endedChatsArePurged,
            .claimsOnlyTheNetworksAsked,
            .requeueTakesBackTheAttempt,
            .importsAnotherStoresRecords,
            .importsCallbacksCallsAndWebhookEvents,
            .importsKeysAuditAndHeldMessages,
            .liveSessionsAreLeased,
            .recipientsCarryTheirLiveSession,
            .liveHandoversAreAnsweredOnce,
            .providerTokensCompareAndSet,
            .providerTokenRacesHaveOneWinner,
            .pushListingFilters,
            .pushListingPagesWithoutGapsOrRepeats,
            .webhookEventsAreQueued,
            .webhookClaimsKeepOrderPerKey,
            .webhookClaimersNeverShareAnEvent,
            .webhookLapsedLeaseIsTakenOver,
            .webhookEventsListAndExpire,
            .webhookEventsByKey,
            .pushesByConversation,
            .queueCountsAgreeWithTheOutbox,
            .appWebhookIsKept,
            .pushFinalStatesWriteWebhookEvents,
            .aPushKeepsItsTraceContext,
            .chatDisconnectsWriteWebhookEvents,
            .callIsWrittenWithItsIngest,
            .callEndsOnce,
            .callRingingIsReportedOnce,
            .receiptsAreRecordedOncePerStage,
            .deadlinesAreSettledOnce,
            .dueCallsAreClaimedOnce,
            .callStopsAreTakenOnce,
            .fleetRoutesTravelWithTheToken,
            .webPushKeysTravelWithTheClaim,
            .callbacksAreClaimedOnceAndPushedOnce,
            .callbackAnswersCompareAndSet,
            .callbackPushedWhenDelivered,
            .customerWaitOrdersTheQueue,
            .nowOrNeverTravelsWithThePush,
            .notificationPermissionChangesOnce,
            .messagesKeepTheirPushOptions,
            .ingestClaimsAreHeldByTheirNode,
            .batchesOfOutcomesKeepTheirTimes,
            .staleRecipientsAreRefused,
            .lateOutcomesAfterALapsedLease,
            .messagesToNobodyAreHeldOnce,
            .heldMessagesEndAndAppsKeepTheirPolicy,
            .apiKeysAndTheAuditLog,
            .queuedMessagesAreCountedPerApp,
            .changesAnswerEachInOneTransaction,
            .relayChangesAnswerInOneBatch,
            .storeWorkIsAppliedAlone,
            .operatorsAndConsoleSessions,
            .importsOperatorsButNoSessions,
            .pushesBySubjectAndByID,
            .pushActivityCountsFinishedPushesByMinute,
            .pendingCallbacksAndRingingCalls,
        ]
        #expect(Set(StoreConformance.Rule.allCases) == tested)
    }
}
